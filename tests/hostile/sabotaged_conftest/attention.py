#@include sabotaged
