#@include stub
