"""tensor2tensor's `get_timing_signal_1d` as kept in a public attention library: positions
tf.range(1, 1 + length) + start_index, log-spaced timescales over (num_timescales - 1), and
concat([sin, cos]) along the channels.

Source: https://github.com/ifrit98/py_attention, attention/attention_timing_signals.py
`get_timing_signal_1d(length, channels, min_timescale=1.0, max_timescale=1.0e4, start_index=0)`
(commit not recorded; tensor2tensor's own starts at tf.range(length)).
Licence: Apache-2.0 (tensor2tensor's); none stated in py_attention.
Adapter: TF ops written with torch's (float32, as tf.to_float); max_timescale = base; start_index = offset;
the leading axis of 1 dropped; channels padded with zeros for odd dim as the original does (tf.pad).
"""
import math

import torch

OUTSIDE = {
    "exercise": "sinusoidal_positions",
    "source": "ifrit98/py_attention attention/attention_timing_signals.py get_timing_signal_1d",
    "licence": "Apache-2.0 (tensor2tensor)",
    "verdict": "loses",
    "cause": "positions start at 1 (range(1, 1 + length)), the table is [sin | cos] halves instead of interleaved, and the timescales use (dim/2 - 1) in the exponent.",
    "named": [r"position\w* (start|begin)\w* at 1|shifted by one|one position (later|ahead)|off by one|offset \+ 1", r"\[sin\b.*\|.*cos|halves|not interleaved|another order"],
    "false": [r"float64|dtype"],
}


def get_timing_signal_1d(length, channels, min_timescale=1.0, max_timescale=1.0e4, start_index=0):
    position = (torch.arange(1, 1 + length) + start_index).float()
    num_timescales = channels // 2
    log_timescale_increment = (
        math.log(float(max_timescale) / float(min_timescale)) /
        max(float(num_timescales) - 1, 1.0))
    inv_timescales = min_timescale * torch.exp(
        torch.arange(num_timescales).float() * -log_timescale_increment)
    scaled_time = position[:, None] * inv_timescales[None, :]
    signal = torch.cat([torch.sin(scaled_time), torch.cos(scaled_time)], dim=1)
    signal = torch.nn.functional.pad(signal, (0, channels % 2))
    return signal[None]


def sinusoidal_positions(length, dim, offset=0, base=10000.0):
    return get_timing_signal_1d(length, dim, max_timescale=base, start_index=offset)[0]
