"""`training`: watch attention learn: a tiny Transformer trained live on the CPU on a toy sequence task.

* `training.config`: `TrainConfig`, everything that determines a run (equal configs, identical runs);
* `training.tasks`: the tasks (reverse, copy, sort, first), their data and the held-out set;
* `training.model`: the tiny Transformer encoder whose attention is watched;
* `training.optimiser`: Adam, written out;
* `training.trainer`: the resumable `Trainer`, its checkpoints and `TrainingResult`.
"""
