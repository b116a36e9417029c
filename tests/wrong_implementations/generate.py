"""`generate` (PyTorch): classic bugs and correct alternatives."""
import torch


def full_sequence_into_cache(model, prompt, max_new_tokens, temperature=0.0, generator=None, use_cache=True):
    caches = model.new_caches() if use_cache else None
    tokens = prompt
    for _ in range(max_new_tokens):
        logits = model(tokens, caches=caches)  # the caches grow by the whole sequence every step
        nxt = logits[:, -1].argmax(-1, keepdim=True) if temperature == 0 else torch.multinomial(
            torch.softmax(logits[:, -1] / temperature, -1), 1, generator=generator)
        tokens = torch.cat([tokens, nxt], dim=1)
    return tokens


def returns_new_tokens(model, prompt, max_new_tokens, temperature=0.0, generator=None, use_cache=True):
    caches = model.new_caches() if use_cache else None
    logits, out, tokens = model(prompt, caches=caches), [], prompt
    for _ in range(max_new_tokens):
        last = logits[:, -1]
        nxt = last.argmax(-1, keepdim=True) if temperature == 0 else torch.multinomial(
            torch.softmax(last / temperature, -1), 1, generator=generator)
        out.append(nxt)
        tokens = torch.cat([tokens, nxt], 1)
        logits = model(nxt, caches=caches) if use_cache else model(tokens)
    return torch.cat(out, dim=1) if out else prompt[:, :0]


def global_rng(model, prompt, max_new_tokens, temperature=0.0, generator=None, use_cache=True):
    caches = model.new_caches() if use_cache else None
    tokens, logits = prompt, model(prompt, caches=caches)
    for _ in range(max_new_tokens):
        last = logits[:, -1]
        if temperature == 0:
            nxt = last.argmax(-1, keepdim=True)
        else:
            nxt = torch.distributions.Categorical(logits=last / temperature).sample()[:, None]
        tokens = torch.cat([tokens, nxt], 1)
        logits = model(nxt, caches=caches) if use_cache else model(tokens)
    return tokens


def temperature_times(model, prompt, max_new_tokens, temperature=0.0, generator=None, use_cache=True):
    caches = model.new_caches() if use_cache else None
    tokens, logits = prompt, model(prompt, caches=caches)
    for _ in range(max_new_tokens):
        last = logits[:, -1]
        nxt = last.argmax(-1, keepdim=True) if temperature == 0 else torch.multinomial(
            torch.softmax(last * temperature, -1), 1, generator=generator)
        tokens = torch.cat([tokens, nxt], 1)
        logits = model(nxt, caches=caches) if use_cache else model(tokens)
    return tokens


def recompute_only_new(model, prompt, max_new_tokens, temperature=0.0, generator=None, use_cache=True):
    caches = model.new_caches() if use_cache else None
    tokens, logits = prompt, model(prompt, caches=caches)
    for _ in range(max_new_tokens):
        last = logits[:, -1]
        nxt = last.argmax(-1, keepdim=True) if temperature == 0 else torch.multinomial(
            torch.softmax(last / temperature, -1), 1, generator=generator)
        tokens = torch.cat([tokens, nxt], 1)
        logits = model(nxt, caches=caches)  # without caches the model sees one token only
    return tokens


def prompt_minus_last_then_loop(model, prompt, max_new_tokens, temperature=0.0, generator=None, use_cache=True):
    """Correct: the prompt but its last token into the caches first, then one token per call."""
    tokens = prompt
    if use_cache:
        caches = model.new_caches()
        if prompt.shape[1] > 1:
            model(prompt[:, :-1], caches=caches)
        step_input = prompt[:, -1:]
    for _ in range(max_new_tokens):
        logits = model(step_input, caches=caches) if use_cache else model(tokens)
        last = logits[:, -1].double()
        if temperature == 0:
            nxt = last.argmax(-1, keepdim=True)
        else:
            nxt = torch.multinomial(torch.softmax(last / temperature, -1).to(logits.dtype), 1, generator=generator)
        tokens = torch.cat([tokens, nxt], dim=1)
        step_input = nxt
    return tokens


def preallocated(model, prompt, max_new_tokens, temperature=0.0, generator=None, use_cache=True):
    """Correct: an output buffer filled in place, an extra model call at the end."""
    B, L = prompt.shape
    out = torch.empty(B, L + max_new_tokens, dtype=torch.int64)
    out[:, :L] = prompt
    caches = model.new_caches() if use_cache else None
    logits = model(prompt, caches=caches)
    for t in range(L, L + max_new_tokens):
        scores = logits[:, -1, :]
        if temperature > 0:
            out[:, t] = torch.multinomial((scores / temperature).softmax(dim=-1), 1, generator=generator)[:, 0]
        else:
            out[:, t] = scores.argmax(dim=-1)
        logits = model(out[:, t:t + 1], caches=caches) if use_cache else model(out[:, :t + 1])
    return out


WRONG = {
    full_sequence_into_cache: "run the whole sequence again",
    returns_new_tokens: "only the new tokens",
    global_rng: "ignore the generator",
    temperature_times: "multiplies the logits",
    recompute_only_new: "without the cache you run only the new token",
}
CORRECT = [prompt_minus_last_then_loop, preallocated]
