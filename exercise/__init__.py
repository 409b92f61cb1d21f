"""`exercise`: the lesson's "Build this" exercise: a student's own attention code, run contained and checked.

What the exercise is:

* `exercise.cases`: the skeleton and the test inputs (the lesson's shapes);
* `exercise.mistakes`: the usual wrong versions of the formula, computed;

running a submission:

* `exercise.runner`: how the function is called and what it reports (runs next to the student's code);
* `exercise.reading`: the lines of the source a diagnosis points to, read without running it;
* `exercise.sandbox`: the server's side (`check_submission`, the queue, the self-test);
* `exercise.zygote`: the warm worker that forks one filtered child per submission;
* `exercise.syscall_filter`: the seccomp allowlist the kernel enforces in that child;
* `exercise.readback`: reading a child's pipes to the end and decoding what it said;
* `exercise.results`: what a run produced (`RunResult`), one record for every path;

judging it:

* `exercise.verdicts`: the checklist (`evaluate`), its causal-mask check in `exercise.causal_check`;
  `exercise.diagnosis`: which mistake it was, and `exercise.mask_diagnosis`: what went wrong with the mask;
* `exercise.measures`: what a student's numbers say about how they were computed;
* the rarer mistakes: `exercise.calls` (what the optional calls show: dropout left on, an input never used),
  `exercise.widths`, `exercise.squash`, `exercise.uniform`, `exercise.second_value`, `exercise.structure` and
  `exercise.pairs` (two mistakes at once);
* `exercise.numbers`: how every message writes a number (`number`), and the list of message templates;
* `exercise.demos`: known mistakes through the same checks, for the page's quizzes;
* ``python -m exercise FILE``: the same checks on a student's own machine (`exercise.__main__`).
"""
