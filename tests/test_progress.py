"""Progress bars: tqdm's text bar outside a notebook; in a notebook, a saved output that ends at 100%."""

import nbformat
import pytest
import tqdm.auto

from td3_lib.progress import in_notebook, progress_bar


def test_outside_a_notebook_it_is_tqdm_auto():
    assert not in_notebook()
    bar = progress_bar(total=3, disable=True)
    assert isinstance(bar, tqdm.auto.tqdm)
    bar.close()


@pytest.mark.slow
def test_an_executed_notebook_keeps_the_finished_bar(tmp_path):
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "from td3_lib.progress import progress_bar\n"
        "bar = progress_bar(total=50, desc='Pendulum-v1', unit='step')\n"
        "for _ in range(50):\n"
        "    bar.update(1)\n"
        "bar.close()")]
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    shown = [o for o in nb.cells[0].outputs if o.output_type == "display_data"]
    assert len(shown) == 1
    text = shown[0].data["text/plain"]
    assert "100%" in text and "50/50" in text, text  # not the bar as first shown, "0%| 0/50"
