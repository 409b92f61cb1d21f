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
    """The lecturer's browser in presenter mode: unlocks the panel with the key, then reruns the panel on the
    interval the server announced, noting each count of answers it showed."""

    def __init__(self, url: str, page_hash: str, key: str) -> None:
        super().__init__(url, page_hash, random.Random(0))
        self.query = {"present": "true"}
        self.key = key
        self.key_field = ""
        self.timer: tuple[str, float] | None = None  # the panel's fragment id and interval
        self.counts: list[tuple[float, int]] = []  # (time.monotonic(), "Answered")
        self.exceptions = 0

    async def open_page(self) -> None:
        await self.connect()
        raw_recv = self.ws.recv

        async def recv(*args, **kwargs):  # note the key field, the panel's timer and the counts shown
            raw = await raw_recv(*args, **kwargs)
            fm = ForwardMsg.FromString(raw)
            if fm.WhichOneof("type") == "auto_rerun":
                self.timer = (fm.auto_rerun.fragment_id, fm.auto_rerun.interval)
            elif fm.WhichOneof("type") == "delta" and fm.delta.WhichOneof("type") == "new_element":
                element = fm.delta.new_element
                which = element.WhichOneof("type")
                if which == "text_input" and element.text_input.id.endswith(f"poll_key_{QUIZ}"):
                    self.key_field = element.text_input.id
                elif which == "metric" and element.metric.label == "Answered":
                    self.counts.append((time.monotonic(), int(element.metric.body)))
                elif which == "exception":
                    self.exceptions += 1
            return raw

        self.ws.recv = recv
        _, seen = await self.rerun()
        unlock_id, fragment_id = seen.widgets["Unlock the class poll"]
        self.extra_states = [WidgetState(id=self.key_field, string_value=self.key),
                             WidgetState(id=unlock_id, trigger_value=True)]
        await self.rerun(fragment_id)

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
