"""The lessons' wing of td3_lib: what the notebooks use to measure, show and check, never needed to train.

``analysis``      the critic's probes (``train(probes=...)``): value estimate against the true
                  discounted return, value at fixed states, roughness and peak height along the action
``plots``         a run against the shipped agent's curve (and the engine's seed bands, imported there)
``tasks``         the lessons' tasks (NarrowPeak, TwoKnobs), the agents of their variants (FixedPolicyTD3)
                  and their probes, registered by name for sweeps and experiments
``pitfalls``      quiet bugs of TD3 and DDPG code, each the smallest change to a correct
                  TD3 (a subclass or an environment wrapper), in one table (lesson 08), each a variant
``experiments``   the shipped results specified as runs of sweeps, and the one way they are run and written
``reference``     a flat TD3 in the shape of the authors' ``TD3.py``, tested equal to ``TD3.update``;
                  its steps are lesson 06's answer key
``update_check``  the check of lesson 06's exercise: the learner's whole update against ``TD3.update``
``checks``        the lessons' exercise checks, one module per lesson (``checks.lesson01``, ...), each lesson
                  importing its own from ``checks``
``diagram``       the update drawn as a diagram, one part highlighted per lesson
``quiz``          the lessons' quizzes, their answers sealed in ``quiz.json``
``results``       full-budget results over seeds, shipped for the lessons (``publish`` adds one)
``paper``         the paper's own TD3 learning curves (sfujim/TD3, 10 seeds on HalfCheetah, Hopper,
                  Walker2d and Ant), to score with ``td3_lib.stats`` as the paper's Tables 1 and 2

The engine (``td3_lib.train`` and what it uses) never imports this package.
"""
