#@include stub


def softmax(x, axis=-1):
    return b"\0" * (100 << 20)                      # 100 MB of bytes in one reply


def scaled_dot_product_attention_np(Q, K, V, mask=None):
    return ["x" * 1000] * 20_000, None                # 20 MB of JSON text


def scaled_dot_product_attention(Q, K, V, mask=None):
    nested = []
    for _ in range(10_000):
        nested = [nested]
    return nested, nested                            # too deep to encode
