"""Interoperability with nbgrader and otter-grader.

``adapter``   run the kit's suites for one exercise in-process (inside a tool's kernel)
``nbgrader``  export an nbgrader course folder; ``grade_cell`` is what its test cells call
``otter``     export one otter assignment per exercise; ``check`` is what its test cases call
"""
from autograder.interop.adapter import (INTEROP_MARK, Outcome, TestInfo, collect_tests, groups,
                                        kernel_source, run_exercise)

__all__ = ["INTEROP_MARK", "Outcome", "TestInfo", "collect_tests", "groups", "kernel_source",
           "run_exercise"]
