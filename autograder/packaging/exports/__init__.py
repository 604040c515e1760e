"""Build steps that write one artefact each into ``dist/``: the Gradescope zip
(:mod:`.gradescope`, with its ``templates/``), the installable wheel (:mod:`.wheel`) and the
student release zip (:mod:`.release_zip`). :mod:`autograder.packaging.build` runs them."""
