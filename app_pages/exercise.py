"""Build this: the lesson's exercise. Write attention yourself; a sandboxed checker says what is wrong."""

from __future__ import annotations

import numpy as np
import streamlit as st

import core.exercise_solution as solution
from exercise.cases import ALLCLOSE_ATOL, BATCH, D_K, SEQ_LEN, SKELETON, worked_answers
from exercise.demos import MistakeDemo, mistake_demo
from exercise.limits import DEFAULT_TIMEOUT_S, MEMORY_BUDGET_BYTES, bytes_in_words
from exercise.mistakes import Mistake, match_mistake, mistaken_attention
from exercise.sandbox import OFFLINE_HINT, Availability, Sandbox, check_submission
from exercise.verdicts import CHECK_NAMES, ExerciseReport
from ui.chart_names import ChartName
from ui.charts import exercise as charts
from ui.deployment import execution_disabled
from ui.display import show_chart
from ui.exercise_presenter import exercise_panel
from ui.exercise_round import COUNT_PAUSED, class_round_box, count_paused, record_check
from ui.layout import as_markdown, explain, introduction, more_detail, page_fragment, show_source
from ui.quiz import predict_then_reveal
from ui.take_home import offer_notebook
from ui.turns import outside_turn
from ui.url_state import presenter_mode

#: The link that makes this page's rerun slowest: `python -m benchmarks` times it (read from this source).
HEAVIEST_LINK = {}

CODE_KEY = "exercise_code"
REPORT_KEY = "exercise_report"
CHECKED_SOURCE_KEY = "exercise_checked_source"
GAVE_UP_KEY = "exercise_gave_up"
# Icons from Streamlit's own icon font (emoji are missing from many fonts); shape and colour both differ.
PASS_MARK = ":green[:material/check_circle:]"
FAIL_MARK = ":red[:material/cancel:]"


@st.cache_resource(show_spinner=False)
def sandbox() -> Sandbox:
    """The server's one sandbox (a warm worker process and the queue in front of it), shared by every session."""
    return Sandbox()


@st.cache_data(show_spinner=False)
def cached_demo(scale: str = "sqrt_d_k", softmax: str = "last") -> MistakeDemo:
    """A known mistake run through the checks (trusted code, in-process): the quizzes' answers."""
    return mistake_demo(Mistake(scale=scale, softmax=softmax))


@st.cache_resource(max_entries=64, show_spinner=False)
def results_chart(worked_output: np.ndarray | None, causal_weights: np.ndarray | None) -> dict | None:
    """The student's numbers beside the right ones (`ui.charts.exercise`), built once per submission's numbers."""
    return charts.results_spec(worked_output, causal_weights, worked_answers())


def results_gap(worked_output: np.ndarray | None, causal_weights: np.ndarray | None) -> str:
    """How far the student's numbers are from the right ones, in a sentence read after the chart's name."""
    right = worked_answers()
    gaps = []
    for what, mine, expected in (("your output", worked_output, right.output),
                                 ("your causal weights", causal_weights, right.causal_weights)):
        if mine is None:
            continue
        if np.shape(mine) != np.shape(expected):
            gaps.append(f"{what} has the shape {np.shape(mine)}, not {np.shape(expected)}")
        elif np.isnan(mine).all():
            gaps.append(f"{what} is NaN everywhere")
        else:
            gaps.append(f"{what} differs from the expected one by at most {np.nanmax(np.abs(mine - expected)):.3g}")
    text = "; ".join(gaps) or "nothing to compare"
    return f"{text[0].upper()}{text[1:]}."


def reset_code() -> None:
    st.session_state[CODE_KEY] = SKELETON


def give_up() -> None:
    st.session_state[GAVE_UP_KEY] = True


def checklist_markdown(report: ExerciseReport) -> str:
    lines = []
    for i, check in enumerate(report.checks, start=1):
        mark = PASS_MARK if check.passed else FAIL_MARK
        lines.append(f"{mark} **{i}. {check.name}**  \n{as_markdown(check.message)}")
    return "\n\n".join(lines)


introduction(
    "Build this: write attention yourself",
    "The lesson ends with an exercise: write `scaled_dot_product_attention(Q, K, V)` in PyTorch from memory, "
    "in about twenty lines. Scores, scale, softmax, weighted sum: four steps, and each one has a classic way "
    "of going wrong. Write yours below and press **Check my code**: the checker runs it on the lesson's tests, "
    "in the lesson's order, and when a test fails it works out *which* mistake you made by comparing your "
    "numbers with the usual wrong versions.",
    r"\operatorname{Attention}(Q, K, V) = \operatorname{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V",
)
st.markdown(
    "**The checklist:**\n"
    + "\n".join(f"{i}. {name}" for i, name in enumerate(CHECK_NAMES, start=1))
    + f"\n\nThe random test uses Q, K, V of shape ({BATCH}, {SEQ_LEN}, {D_K}) (batch, seq_len, d_k); the "
    "stretch runs the worked example's three tokens, without a batch dimension, then adds a causal mask to it and "
    "to the batched test."
)


@page_fragment
def page_body() -> None:
    offer_notebook("exercise", seed=0)  # the seed of `exercise_cases`, the checker's inputs
    switched_off = execution_disabled()
    # The self-test runs once per server, in the background: None means it has not finished yet.
    availability: Availability | None = None if switched_off else sandbox().availability(wait=False)
    unsafe_host = availability is not None and not availability.available
    disabled = switched_off or unsafe_host
    st.header("Your code")
    class_round_section()
    execution_notice(switched_off, unsafe_host, availability)
    code, check_clicked = code_editor(disabled)
    if check_clicked and not disabled:
        run_the_checks(code)
    report: ExerciseReport | None = st.session_state.get(REPORT_KEY)
    if report is not None:
        results_section(report, code)
    predict_then_reveal_section()
    reference_section(report)
    how_the_checker_works_section()


def class_round_section() -> None:
    """The class round: the lecturer's panel in presenter mode, else the student's box (empty without a round)."""
    if presenter_mode():
        exercise_panel()
    else:
        class_round_box()


def execution_notice(switched_off: bool, unsafe_host: bool, availability: Availability | None) -> None:
    """Why the Check button is off, when it is: switched off by the deployment, or a sandbox this host cannot hold."""
    if switched_off:
        st.info(
            "Running code is **switched off on this deployment** (the setting `ATTENTION_DISABLE_EXEC`). Everything "
            "else works: write your function here or in your own editor, try the questions below and compare with "
            "the reference solution. " + OFFLINE_HINT,
            icon=":material/block:",
        )
    elif unsafe_host and availability is not None:
        st.warning(
            "Running code is **off on this server**, because the sandbox could not prove that it holds here: "
            f"{availability.reason} Everything else on the page works. {OFFLINE_HINT}",
            icon=":material/gpp_bad:",
        )


def code_editor(disabled: bool) -> tuple[str, bool]:
    """The editor and its buttons; returns the code and whether Check was pressed."""
    st.html("<style>.st-key-exercise_code textarea {font-family: 'Source Code Pro', ui-monospace, monospace;"
            " font-size: 0.9rem; line-height: 1.45;}</style>")
    code = st.text_area(
        "Your `scaled_dot_product_attention`", value=SKELETON, height=440, key=CODE_KEY, persist_state="session",
        help="Keep the function's name. Returning `(output, weights)` like the lesson unlocks every check; "
             "returning only the output is enough for the first ones. Code under `if __name__ == '__main__':` "
             "is not run.",
    )
    with st.container(horizontal=True):
        check_clicked = st.button(
            "Check my code", type="primary", icon=":material/play_arrow:", disabled=disabled,
            help="Code execution is off on this server." if disabled else
            f"Runs your code in a separate process that the kernel allows only to compute (at most "
            f"{DEFAULT_TIMEOUT_S:g} s).",
        )
        st.button("Reset to the skeleton", on_click=reset_code, icon=":material/restart_alt:",
                  help="Replaces the editor's content with the starting skeleton.")
        st.button("I give up, show me", on_click=give_up, icon=":material/flag:",
                  help="Reveals the reference solution at the bottom of the page.")
        st.download_button("Download the skeleton", SKELETON, file_name="attention_exercise.py", mime="text/x-python",
                           icon=":material/download:", help="The starting skeleton as a .py file, for your own editor.")
    return code, check_clicked


def run_the_checks(code: str) -> None:
    """Run the student's code through the sandbox, showing the queue ahead of it; the report goes to the session."""
    queue_notice = st.empty()

    def show_queue(ahead: int) -> None:
        queue_notice.info(f"Waiting for the checker: {ahead} {'check' if ahead == 1 else 'checks'} of other "
                          "students ahead of yours.", icon=":material/hourglass_top:")

    with st.spinner("Running your code in the sandbox…"), outside_turn():  # the class runs while the sandbox works
        report = check_submission(code or "", sandbox(), timeout_s=DEFAULT_TIMEOUT_S, on_wait=show_queue)
        st.session_state[REPORT_KEY] = report
        st.session_state[CHECKED_SOURCE_KEY] = code
        if not presenter_mode():  # the lecturer's own checks are not the room's
            record_check(report)
    queue_notice.empty()
    if count_paused():
        st.warning(COUNT_PAUSED, icon=":material/cloud_off:")


def results_section(report: ExerciseReport, code: str) -> None:
    """The checklist, the diagnosis, the stretch's numbers beside the right ones, and what the code printed."""
    st.header("Results")
    if st.session_state.get(CHECKED_SOURCE_KEY) != code:
        st.caption("These results are for the code as it was when you pressed **Check my code**; you have "
                   "edited it since.")
    n_passed = sum(c.passed for c in report.checks)
    if report.passed:
        st.success(f"All {len(report.checks)} checks pass, the stretch included. This is attention.",
                   icon=":material/celebration:")
    else:
        st.metric("checks passed", f"{n_passed} / {len(report.checks)}")
    st.markdown(checklist_markdown(report))
    if report.diagnoses:
        st.subheader("Diagnosis")
        for text in report.diagnoses:
            st.warning(as_markdown(text), icon=":material/troubleshoot:")

    stretch_chart = results_chart(report.worked_output, report.causal_weights)
    if stretch_chart is not None:
        st.markdown("Your function on the stretch's inputs, next to what it should give:")
        show_chart(stretch_chart, export=False,
                   alt=ChartName("Heatmaps of your result on the worked example next to the expected one",
                                 results_gap(report.worked_output, report.causal_weights)))
        if report.causal_weights is not None and np.isnan(report.causal_weights).any():
            st.caption("Cells marked *null* are NaN in your weights: a row whose keys were all masked out "
                       "has nothing left for the softmax to share out.")
    if report.stdout or report.stderr:
        with st.expander("What your code printed", icon=":material/terminal:"):
            if report.stdout:
                st.code(report.stdout, language=None)
            if report.stderr:
                st.caption("stderr")
                st.code(report.stderr, language=None)
    if report.isolation:
        st.caption(f"Ran in {report.isolation}, in {report.elapsed_s:.2f} s "
                   f"({report.run_s or 0:.2f} s of it your code).")


def predict_then_reveal_section() -> None:
    """Two known mistakes to predict: dividing by d_k, and the softmax over the wrong dimension."""
    st.header("Predict, then reveal")
    explain("Two questions about the mistakes above. Commit to an answer first: the app then runs the mistaken "
            "version through the same checks and shows what really happens.")
    d_k_demo = cached_demo(scale="d_k")
    predict_then_reveal(
        f"You divide the scores by d_k = {D_K} instead of √d_k = {int(np.sqrt(D_K))}. What does "
        f"`torch.allclose(yours, F.scaled_dot_product_attention(Q, K, V), atol={ALLCLOSE_ATOL:g})` return on the "
        f"({BATCH}, {SEQ_LEN}, {D_K}) test?",
        ["True: the difference is too small to matter", "False"],
        answer="True: the difference is too small to matter" if d_k_demo.allclose else "False",
        explanation=(
            f"The largest difference from PyTorch is **{d_k_demo.max_abs_diff:.3f}**, far above the tolerance. "
            f"Dividing by {D_K} instead of {int(np.sqrt(D_K))} makes every score {D_K / np.sqrt(D_K):g} times smaller "
            "than it should be, "
            "so each softmax row is flatter: the largest attention weight drops from "
            f"{d_k_demo.largest_weight_correct:.3f} to {d_k_demo.largest_weight:.3f}. The rows still sum to 1, so "
            "only the comparison with PyTorch catches this one."
        ),
        key="exercise_sqrt",
    )
    dim_demo = cached_demo(softmax="queries")
    lo, hi = dim_demo.row_sum_range
    predict_then_reveal(
        "Your softmax runs over `dim=-2` (down each column) instead of `dim=-1`. Which check fails first?",
        list(CHECK_NAMES),
        answer=dim_demo.first_failed_check or CHECK_NAMES[-1],
        explanation=(
            f"**{dim_demo.first_failed_check}**. The function runs and the shape is right, but now each *column* "
            f"sums to 1: the rows of the weights sum to anything from {lo:.2f} to {hi:.2f}. That is why the lesson "
            "has you print `weights.sum(dim=-1)`."
        ),
        key="exercise_softmax_dim",
    )


def reference_section(report: ExerciseReport | None) -> None:
    """The reference solution, once the student has checked their code or given up."""
    st.header("Reference solution")
    if report is not None or st.session_state.get(GAVE_UP_KEY):
        show_source(solution.scaled_dot_product_attention, title="Reference solution (core/exercise_solution.py)")
    else:
        st.caption("The reference solution appears here after your first check, or press **I give up, show me**.")


def how_the_checker_works_section() -> None:
    """How a student's code is run: a forked child under a seccomp filter, with time and memory limits."""
    st.header("How the checker works")
    explain(
        "Your code never runs inside this app: each check runs it in a fresh, locked-down process with "
        f"{DEFAULT_TIMEOUT_S:g} s and about {bytes_in_words(MEMORY_BUDGET_BYTES)} of memory beyond PyTorch's own, which can only "
        "compute and send back the numbers your function returned; every verdict is computed here. To name a "
        "mistake, the checker runs the usual wrong versions of the formula on the same inputs and looks for the one "
        "that gives exactly your numbers."
    )
    with more_detail("the sandbox your code runs in"):
        sandbox_text()
    show_source(mistaken_attention, match_mistake, title="The known mistakes, as code")


def sandbox_text() -> None:
    """How the locked-down process is made: a forked child under a seccomp filter, with time and memory limits."""
    st.markdown(
        "The server keeps one worker process that has already loaded "
        "PyTorch; for each check it forks a **fresh child process** that reads your code and the test inputs, "
        "closes every file but its output pipes and, where the server runs as root, becomes a fresh unprivileged "
        "user. Then, before your code is even compiled, the child asks the Linux kernel for a **seccomp filter**: "
        "from that moment the kernel lets it compute, allocate memory, print and raise, and refuses everything else, "
        "whichever library asks: no files (not even reading), no network, no new processes or threads, no signals "
        "to other processes, no peeking at other processes. The filter cannot be lifted from inside. On top, it "
        f"gets **{DEFAULT_TIMEOUT_S:g} s** of wall-clock time and about **{bytes_in_words(MEMORY_BUDGET_BYTES)}** of "
        "memory beyond PyTorch's own, and is killed when the time is up. It only sends back the numbers your "
        "function returned; every verdict is computed here. Before the first check, the server proves the filter "
        "works on this host (a test child must be refused a file and a socket); where it cannot, code execution "
        "stays off."
    )


page_body()
