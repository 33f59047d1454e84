"""How this run directory was made: by td3_lib at commit de0274f (run format td3_lib.run/1, whose
checkpoint keys were t, rng and sample_generator), with

    PYTHONPATH=<a checkout of de0274f> python tests/data/run_format_1/make.py tests/data/run_format_1

A Pendulum-v1 run stopped at its evaluation of step 400, so that its last checkpoint (with the
replay buffer) is the one of step 200: before the first update (start_timesteps=300), so the
checkpoint holds the initial networks, 200 random transitions and the random-number states.
tests/test_run_format.py loads it and resumes it with today's code."""

import sys

import torch

from td3_lib import TD3Config, train

CONFIG = TD3Config(hidden_sizes=(16, 16), start_timesteps=300, total_steps=600, eval_freq=200,
                   eval_episodes=1, batch_size=32)


class Stop(Exception):
    pass


def stop_at_400(step, agent):
    if step >= 400:
        raise Stop


if __name__ == "__main__":
    torch.set_num_threads(1)
    try:
        train("Pendulum-v1", CONFIG, seed=7, device="cpu", checkpoint_dir=sys.argv[1], progress=False,
              save_buffer=True, callback=stop_at_400)
    except Stop:
        pass
