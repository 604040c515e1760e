"""A built ``autograder.zip``, run the way Gradescope runs it: in a private mount namespace on
this machine (:mod:`.simulate`, ``build --self-grade``) or in a Docker replica of Gradescope
(:mod:`.replica` builds the image, :mod:`.replica_runs` grades in fresh containers;
``build --verify docker``)."""
