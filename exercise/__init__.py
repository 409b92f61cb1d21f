"""`exercise`: running a student's own attention code, contained, and checking it.

* `exercise.sandbox`: the server's side (`check_submission`, the queue, the self-test);
* `exercise.zygote`: the warm worker that forks one filtered child per submission;
* `exercise.syscall_filter`: the seccomp allowlist the kernel enforces in that child;
* ``python -m exercise FILE``: the same checks on a student's own machine (`exercise.__main__`).

The checklist and the diagnoses themselves are computed by `core.exercise` from the data a run
sent back.
"""
