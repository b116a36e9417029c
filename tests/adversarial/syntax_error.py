def attention_entropy(weights:
    return 0
