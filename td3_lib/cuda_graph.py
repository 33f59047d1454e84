"""The update's two steps as CUDA graphs: each captured once, then replayed.

On a GPU, TD3's update is small (a batch of 256 through 256-256 networks): its
time goes to launching a few hundred small kernels one by one from Python,
not to arithmetic. A CUDA graph records the kernels of one step once and
replays all of them with a single launch. With ``TD3Config(cuda_graph=True)``
the agent's ``critic_step`` and ``actor_step`` are ``GraphedStep``s of the
same methods; ``TD3.update`` (Algorithm 1) is unchanged and still decides
when the delayed actor step runs, so the actor's graph is replayed every
``policy_freq``-th update.

What a replay needs, and where it is done:

- the same memory every time: each batch is copied into the static tensors
  the graphs read (``StaticBatch``), and the outputs are copied out of the
  graph's own memory, so the metrics of one update survive the next;
- Adam built with ``capturable=True`` (``agent.py``), its step count on the GPU;
- the target-smoothing noise drawn from the agent's generator, registered
  with the critic's graph: a replay then draws the numbers an eager step
  would have drawn, and moves the generator on as far;
- a few eager calls of each step first, on a side stream (as PyTorch's notes
  on CUDA graphs ask), so that Adam's state, the gradients and the libraries'
  workspaces exist before the capture.
"""

from __future__ import annotations

import functools

import torch

from .buffer import Batch

WARMUP_CALLS = 3
"""Eager calls of each step before it is captured."""


def check_graph_device(cuda_graph: bool, device: torch.device) -> None:
    """Refuse ``cuda_graph=True`` in one line where it cannot run: off a CUDA device, or on a
    torch whose graphs cannot carry the agent's own random-number generator."""
    if not cuda_graph:
        return
    if device.type != "cuda":
        raise ValueError(f"TD3Config.cuda_graph=True needs a CUDA device, not {str(device)!r}: "
                         "use device='cuda' on a GPU, or cuda_graph=False.")
    if not hasattr(torch.cuda.CUDAGraph, "register_generator_state"):
        raise ValueError(f"TD3Config.cuda_graph=True needs CUDAGraph.register_generator_state, which "
                         f"torch {torch.__version__} lacks: upgrade torch, or use cuda_graph=False.")


class StaticBatch:
    """The batch tensors the captured steps read; each update's batch is copied into them."""

    def __init__(self):
        self.batch: Batch | None = None
        self.source: Batch | None = None  # the batch copied in last

    def load(self, batch: Batch, always: bool = True) -> Batch:
        """Copy ``batch`` in and return the static one. With ``always=False`` the copy is
        skipped when ``batch`` is the one copied in last (the actor step of an update
        reads the batch its critic step has just copied)."""
        if self.batch is None:
            self.batch = Batch(*(t.detach().clone() for t in batch))
        elif always or batch is not self.source:
            for static, new in zip(self.batch, batch):
                if static.shape != new.shape:
                    raise ValueError(f"cuda_graph=True replays steps captured for batches of "
                                     f"{static.shape[0]} transitions; this batch has {new.shape[0]}: "
                                     "keep batch_size fixed, or use cuda_graph=False.")
                static.copy_(new)
        self.source = batch
        return self.batch


class GraphedStep:
    """One step of the update, ``step(batch)``: eager for its first calls, then captured once
    and replayed. Its outputs are tensors, or a tuple of them."""

    def __init__(self, step, static: StaticBatch, device: torch.device,
                 generators=(), always_copy: bool = True):
        self.step, self.static, self.generators = step, static, tuple(generators)
        self.always_copy = always_copy
        self.calls = 0
        self.graph: torch.cuda.CUDAGraph | None = None
        self.outputs = None
        self.stream = torch.cuda.Stream(device)

    def __call__(self, batch: Batch):
        if self.graph is None:
            self.calls += 1
            if self.calls <= WARMUP_CALLS:
                return self.run_eagerly(batch)
            self.capture(self.static.load(batch, self.always_copy))
        else:
            self.static.load(batch, self.always_copy)
        self.graph.replay()
        return copy_out(self.outputs)

    def run_eagerly(self, batch: Batch):
        """A warm-up call: the step itself, on the side stream the capture will use."""
        current = torch.cuda.current_stream(self.stream.device)
        self.stream.wait_stream(current)
        with torch.cuda.stream(self.stream):
            outputs = self.step(batch)
        current.wait_stream(self.stream)
        return outputs

    def capture(self, static_batch: Batch) -> None:
        """Record the step's kernels on the static batch (nothing runs until a replay)."""
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.device(self.stream.device):
            for generator in self.generators:
                graph.register_generator_state(generator)
            with torch.cuda.graph(graph, stream=self.stream):
                outputs = self.step(static_batch)
        self.graph = graph
        self.outputs = tuple(t.detach() for t in outputs) if isinstance(outputs, tuple) else outputs.detach()


def copy_out(outputs):
    """Copies of a replay's outputs, which the next replay overwrites in place."""
    return tuple(t.clone() for t in outputs) if isinstance(outputs, tuple) else outputs.clone()


def graphed_steps(agent) -> tuple[GraphedStep, GraphedStep]:
    """The agent's critic step and actor step (its class's methods, so a subclass's own) as
    GraphedSteps that share one StaticBatch; only the critic step draws noise."""
    static = StaticBatch()
    cls = type(agent)
    critic = GraphedStep(functools.partial(cls.critic_step, agent), static, agent.device,
                         generators=[agent.generator])
    actor = GraphedStep(functools.partial(cls.actor_step, agent), static, agent.device, always_copy=False)
    return critic, actor
