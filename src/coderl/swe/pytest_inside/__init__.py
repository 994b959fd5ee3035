"""The grading run's own code inside the sandbox: ``launcher.py`` (starts pytest with its
configuration pinned, under a supervisor the tests cannot write into) and ``reporter.py`` (the
pytest plugin whose records are the verdicts). Stdlib and pytest only: they run under the task's
environment, bound read-only into the grading sandbox at their host path, outside the work tree.
The host side is ``coderl.swe.grading_run`` (the spec) and ``coderl.swe.verdicts`` (reading the
records back)."""
