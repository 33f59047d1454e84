"""The lessons' wing of td3_lib: what the notebooks use to show and check, never needed to train.

``pitfalls``      quiet bugs of TD3 and DDPG code, each the smallest change to a correct
                  TD3 (a subclass or an environment wrapper), in one table (lesson 08)
``update_check``  the check of lesson 06's exercise: the learner's whole update against ``TD3.update``

The engine (``td3_lib.train`` and what it uses) never imports this package.
"""
