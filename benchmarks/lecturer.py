"""The lecturer of the class poll's benchmarks: in presenter mode on the scaled-attention page, its panel unlocked
with the servers' presenter key, rerunning on the interval the server announces (`python -m benchmarks.load
--poll-round`, `python -m benchmarks.poll_idle`)."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.WidgetStates_pb2 import WidgetState

from benchmarks.protocol import Student
from poll import Question

#: The presenter key of the benchmarks' servers.
POLL_KEY = "the-benchmark-lecturers-key"
PAGE, QUIZ = "scaled_attention", "scaling_16x"
#: The benchmarks' round: on the page's quiz, at the page's defaults.
QUESTION = Question(quiz=QUIZ, text="Benchmark: which option?", options=("one", "two"), answer="one",
                    explanation="The benchmark's answer, explained.")


class Presenter(Student):
    """The lecturer's browser in presenter mode: unlocks the panel of `quiz` (a quiz, or the store's page of the
    exercise's class round) with the key, then reruns the panel on the interval the server announced, noting each
    number every metric showed (`shown`; `counts`: the poll's "Answered")."""

    def __init__(self, url: str, page_hash: str, key: str, quiz: str = QUIZ) -> None:
        super().__init__(url, page_hash, random.Random(0))
        self.query = {"present": "true"}
        self.key = key
        self.quiz = quiz
        self.key_field = ""
        self.panel_fragment = ""  # the panel's fragment: the one drawing `quiz`'s key field
        self.timers: dict[str, float] = {}  # a fragment with a timer -> its interval
        self.unlock = ""  # `quiz`'s "Unlock the class poll" button
        self.shown: dict[str, list[tuple[float, int]]] = {}  # a metric's label -> (time.monotonic(), number)
        self.exceptions = 0

    @property
    def timer(self) -> tuple[str, float]:
        """The panel's fragment id and interval."""
        return self.panel_fragment, self.timers[self.panel_fragment]

    @property
    def counts(self) -> list[tuple[float, int]]:
        return self.shown.get("Answered", [])

    async def open_page(self) -> None:
        await self.connect()
        raw_recv = self.ws.recv

        async def recv(*args, **kwargs):  # note the key field, the panel's timer and the counts shown
            raw = await raw_recv(*args, **kwargs)
            fm = ForwardMsg.FromString(raw)
            if fm.WhichOneof("type") == "auto_rerun":
                self.timers[fm.auto_rerun.fragment_id] = fm.auto_rerun.interval
            elif fm.WhichOneof("type") == "delta" and fm.delta.WhichOneof("type") == "new_element":
                element = fm.delta.new_element
                which = element.WhichOneof("type")
                if which == "text_input" and element.text_input.id.endswith(f"poll_key_{self.quiz}"):
                    self.key_field, self.panel_fragment = element.text_input.id, fm.delta.fragment_id
                elif which == "button" and element.button.form_id == f"poll_key_form_{self.quiz}":
                    self.unlock = element.button.id
                elif which == "metric" and element.metric.body.isdigit() \
                        and fm.delta.fragment_id == self.panel_fragment:
                    self.shown.setdefault(element.metric.label, []).append((time.monotonic(),
                                                                            int(element.metric.body)))
                elif which == "exception":
                    self.exceptions += 1
            return raw

        self.ws.recv = recv
        await self.rerun()
        self.extra_states = [WidgetState(id=self.key_field, string_value=self.key),
                             WidgetState(id=self.unlock, trigger_value=True)]
        await self.rerun(self.panel_fragment)

    async def tick_until(self, end_at: float, seen_through: Callable[[], bool] = lambda: False) -> None:
        """Rerun the panel on its interval until `end_at` (a late tick goes at once, as a browser's timer does), or
        until one tick after `seen_through()` held, which then shows everything there was by that moment."""
        fragment_id, interval = self.timer
        due = time.monotonic()
        while due + interval < end_at:
            last = seen_through()
            due += interval
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            await self.rerun(fragment_id)
            if last:
                return
