"""Where the window's garbage is collected."""

import gc
import threading

from workbench.gui.main_window import MainWindow


def test_during_a_run_garbage_is_collected_in_the_gui_thread_only(window: MainWindow, qtbot) -> None:
    """A collection in the engine thread can delete a widget's wrapper there and deadlock with the
    GUI thread (see the ``_garbage_collected_in_the_gui_thread`` fixture); a run makes plenty of
    cyclic garbage in the engine thread, and every collection during it must happen in the GUI
    thread, on the collector's timer."""
    threads: list[str] = []

    def note(phase: str, info: dict) -> None:
        if phase == "start":
            threads.append(threading.current_thread().name)

    gc.callbacks.append(note)
    try:
        with qtbot.waitSignal(window.run_done, timeout=60_000):
            window.start_run({"kernel": "vector_add", "backend": "sim", "strategy": "agents", "budget": 40,
                              "options": {"compile": "estimate"}})
        qtbot.wait(1200)  # at least one tick of the collector after the run
    finally:
        gc.callbacks.remove(note)
    assert threads, "nothing was collected during the run"
    assert set(threads) == {threading.main_thread().name}, threads
