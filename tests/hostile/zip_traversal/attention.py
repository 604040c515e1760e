#@include solution
