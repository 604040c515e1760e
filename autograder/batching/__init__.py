"""What ``batch`` uses besides its own module: resuming (:mod:`~autograder.batching.resume`),
warm graders (:mod:`~autograder.batching.warm`, :mod:`~autograder.batching.pool`) and a Dask
cluster (:mod:`~autograder.batching.cluster`)."""
