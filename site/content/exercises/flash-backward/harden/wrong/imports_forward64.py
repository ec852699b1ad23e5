# Wrong: the project's own float64 forward imported and called, the one the tests compare with:
# masks and empty rows come out right, and fp16 within its tolerance. No tiles, no online softmax.
import math
import struct

from emulator.backward import forward64


def to_fp16(x):
    """x rounded to the nearest IEEE half-precision number (binary16), as a float.

    Values from 65,520 up round to inf (the largest half is 65,504). Uses the
    standard library's struct format "e"; given, do not change.
    """
    try:
        return struct.unpack("<e", struct.pack("<e", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


# exp(x) rounds to inf in half precision once it reaches 65,520, halfway between
# the largest half (65,504) and the next power of two's step (65,536).
FP16_EXP_LIMIT = math.log(65520)   # 11.0901...


def flash_forward(Q, K, V, block_rows, block_cols, causal=False, key_mask=None, fp16=False):
    """Tiled exact attention with masks. Q: N rows of d floats; K, V: N_k rows.

    key_mask: None, or N_k booleans (False = a padding key nobody may see).
    fp16: round each P entry to half precision at THE FP16 POINT below.
    Returns (O, L): O is N rows, L the logsumexp of each row (-inf if it saw no key).
    """
    mask = None if key_mask is None else [list(key_mask) for _ in Q]
    return forward64(Q, K, V, causal, mask)
