"""`poll`: the class poll's storage and rules, without Streamlit or Altair.

A lecturer opens a page's predict-then-reveal question to the class as a *round*; students vote on it until
the lecturer locks it; the lecturer reveals the computed answer, may open a new round of the same question,
and downloads the results. The UI calls only what is listed here.

Starting a server::

    store = open_store()                         # ATTENTION_POLL_DATABASE_URL, else SQLite in the data dir
    key = presenter_key(st.secrets.get("presenter_key"), data_dir())   # or ATTENTION_PRESENTER_KEY
    if key.source == "generated":
        print(f"Presenter key: {key.value}")     # once, in the server's log; never in a page or URL
    guard = PresenterKeyGuard(key)
    hasher = store.voter_hasher()

The lecturer (every call after ``guard.check(client, typed_key)`` returned)::

    question = Question(quiz="scaling_largest_weight", text=..., options=(...), answer=computed,
                        explanation=..., settings="d_k=64&scaled=true")
    r = store.open_round("scaled_attention", question)      # -> Round; the page's current round
    store.counts(r.id)                                       # -> Counts(options, votes, total)
    store.lock(r.id); store.reveal(r.id)                     # -> Round (reveal locks too)
    store.new_round(r.id)                                    # -> Round: same question, counts from zero
    store.end_round(r.id)                                    # the page has no current round
    results_csv(store, "scaled_attention")                   # -> str (CSV)

A student (the browser keeps a `new_browser_token()`; only its keyed hash is stored)::

    r = store.current_round("scaled_attention")              # None: the page works as before
    store.vote(r.id, hasher.voter(token), "it shrinks")      # replaces the voter's earlier answer
    store.vote_of(r.id, hasher.voter(token))                 # -> the recorded answer, or None

Both::

    store.version("scaled_attention")   # -> int; changes on every vote, open, lock, reveal: poll it cheaply and
                                        # read rounds and counts only when it moved
    versions = VersionCache(store)      # one per process: its sessions share one reading per page per 0.5 s
    versions.version("scaled_attention")
    states = RoundStates(store, versions)   # what a student's screen shows: "none", "3-open", "3-locked", ...
    states.state("scaled_attention")        # changes on open, lock, reveal, new round, close; not on a vote

The exercise's class round (`poll.exercise_rounds`; the lecturer's calls after the key, as above)::

    r = store.open_exercise_round("exercise")                # -> ExerciseRound; a new round closes the last
    store.record_result(r.id, hasher.voter(token), CheckResult("failed", 4, "scale_none"))  # the server's checker's
    summarise(store.exercise_results(r.id))                  # -> RoundSummary: checked, passed, attempts, mistakes
    store.show_exercise_round(r.id); store.close_exercise_round(r.id)
    exercise_results_csv(store, "exercise")                  # -> str (CSV), students numbered, no identifier

Every refusal or failure is a `PollError` whose message a student can read (`poll.errors`): catch `PollError`,
show `str(error)`. Nothing is recorded by a call that raised.
"""

from poll.errors import (
    DatabaseUnavailableError,
    InvalidQuestionError,
    MalformedInputError,
    PollConfigError,
    PollError,
    PresenterKeyError,
    PresenterKeySetupError,
    PresenterKeyThrottledError,
    RoundLockedError,
    StaleRoundError,
    UnknownOptionError,
    UnknownRoundError,
    WrongPresenterKeyError,
)
from poll.exercise_rounds import CheckResult, ExerciseRound, RoundSummary, StudentResult, summarise
from poll.export import exercise_results_csv, results_csv
from poll.factory import data_dir, open_store
from poll.key_guard import PresenterKeyGuard, ThrottlePolicy
from poll.presenter_key import PresenterKey, presenter_key
from poll.round_state import NO_ROUND, RoundStates, exercise_state, round_state
from poll.rounds import Counts, Question, Round
from poll.store import PollStore
from poll.version_cache import VersionCache
from poll.voters import Voter, VoterHasher, new_browser_token

__all__ = [
    "CheckResult",
    "Counts",
    "DatabaseUnavailableError",
    "ExerciseRound",
    "InvalidQuestionError",
    "MalformedInputError",
    "NO_ROUND",
    "PollConfigError",
    "PollError",
    "PollStore",
    "PresenterKey",
    "PresenterKeyError",
    "PresenterKeyGuard",
    "PresenterKeySetupError",
    "PresenterKeyThrottledError",
    "Question",
    "Round",
    "RoundLockedError",
    "RoundStates",
    "RoundSummary",
    "StaleRoundError",
    "StudentResult",
    "ThrottlePolicy",
    "UnknownOptionError",
    "UnknownRoundError",
    "VersionCache",
    "Voter",
    "VoterHasher",
    "WrongPresenterKeyError",
    "data_dir",
    "exercise_results_csv",
    "exercise_state",
    "new_browser_token",
    "open_store",
    "presenter_key",
    "results_csv",
    "round_state",
    "summarise",
]
