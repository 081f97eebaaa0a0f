"""Dataset-scale campaigns: many estimator runs / model evaluations as resumable, reproducible jobs.

:mod:`~rgbt.campaign.spec` (the campaign file), :mod:`~rgbt.campaign.jobs` (jobs and their keys),
:mod:`~rgbt.campaign.worker` (one job), :mod:`~rgbt.campaign.executors` (a local process pool or
Ray), :mod:`~rgbt.campaign.run` (``rgbt campaign run``), :mod:`~rgbt.campaign.report`
(``rgbt campaign report``: Table 6 / Table 2 layouts).
"""
