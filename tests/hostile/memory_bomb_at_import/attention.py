#@include stub

_hoard = []
while True:
    _hoard.append(b"x" * (16 << 20))
