"""The observer list shared by single runs and sweeps."""

from __future__ import annotations

from workbench.runner.events import Event, Progress, RunFinished, Subscribers


def _progress(done: int) -> Progress:
    return Progress(done=done, total=10, failures=0, elapsed_s=0.0, eta_s=None, best_latency_ms=None)


def test_every_subscriber_gets_each_event_in_order_until_it_unsubscribes() -> None:
    hub = Subscribers()
    first: list[Event] = []
    second: list[Event] = []
    hub.subscribe(first.append)
    stop_second = hub.subscribe(second.append)
    hub.emit(_progress(1))
    stop_second()
    stop_second()  # a second call is harmless
    hub.emit(_progress(2))
    assert [e.done for e in first if isinstance(e, Progress)] == [1, 2]
    assert [e.done for e in second if isinstance(e, Progress)] == [1]


def test_a_callback_may_unsubscribe_itself_while_the_event_is_delivered() -> None:
    hub = Subscribers()
    seen: list[str] = []
    stops: list = []

    def once(event: Event) -> None:
        seen.append("once")
        stops[0]()

    stops.append(hub.subscribe(once))
    hub.subscribe(lambda event: seen.append("always"))
    finished = RunFinished("budget", 1)
    hub.emit(finished)
    hub.emit(finished)
    assert seen == ["once", "always", "always"]
