"""What a batch leaves for the people who run the course, besides the per-student results.

* :mod:`~autograder.staff.model`: the class as these outputs see it (submissions, one
  gradebook line per person, the run's facts) and exact scores;
* :mod:`~autograder.staff.stats`: pass rates, separation (point-biserial), tests to look
  at, misconceptions, histogram bins;
* :mod:`~autograder.staff.late`: the late policy (due date, penalty, cut-off, extensions);
* :mod:`~autograder.staff.similarity`: similar submissions (copydetect), advisory only;
* :mod:`~autograder.staff.lms`: ``grades.csv`` and the LMS imports (Canvas, Moodle);
* :mod:`~autograder.staff.analysis`, :mod:`~autograder.staff.figures`,
  :mod:`~autograder.staff.report` (``report.html``, from ``templates/``);
* :mod:`~autograder.staff.outputs`: all of it, written after a batch
  (:func:`autograder.gradebook.write_outputs` calls it);
* :mod:`~autograder.staff.options`: ``batch``'s options for these.

None of it is on the grading path: the Gradescope zip and ``grade`` never import it.
"""
