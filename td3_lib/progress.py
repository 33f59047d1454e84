"""Progress bars: tqdm.auto's, and in a notebook one whose saved output ends in its final state.

In a Jupyter kernel tqdm.auto draws a widget. The cell's saved output keeps the
widget's text form from the moment it was first shown ("0%| 0/15000"), because
later updates travel to the widget only. ``progress_bar`` shows the notebook bar
under a display id and, when the bar closes, sends its final state under that id
once more, so a saved or executed notebook reads "100%| 15000/15000 [...]".
"""

from __future__ import annotations

import tqdm.auto

try:
    import tqdm.notebook as tqdm_notebook
except ImportError:  # pragma: no cover - tqdm always ships it; ipywidgets is what may be missing
    tqdm_notebook = None


def in_notebook() -> bool:
    """Whether tqdm.auto chose its notebook (widget) bar in this process."""
    return tqdm_notebook is not None and issubclass(tqdm.auto.tqdm, tqdm_notebook.tqdm)


if tqdm_notebook is not None:

    class NotebookBar(tqdm_notebook.tqdm):
        """tqdm's notebook bar, shown under a display id and shown again, final, when it closes."""

        def __init__(self, *args, **kwargs):
            self.handle = None
            super().__init__(*args, display=False, **kwargs)
            if not self.disable:
                from IPython.display import display

                self.handle = display(self.container, display_id=True)
                self.displayed = True

        def close(self):
            handle, self.handle = self.handle, None
            super().close()
            if handle is not None:
                handle.update(self.container)  # the saved output becomes the final bar


def progress_bar(**kwargs):
    """A tqdm bar (keyword arguments as tqdm's): the notebook one above in Jupyter, tqdm's text bar elsewhere."""
    return NotebookBar(**kwargs) if in_notebook() else tqdm.auto.tqdm(**kwargs)
