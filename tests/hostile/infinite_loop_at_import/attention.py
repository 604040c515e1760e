#@include stub

while True:
    pass
