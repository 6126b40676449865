"""The Space's UI modules (texts, columns, population, submission, comparison, settings).

Imported by ``space/app.py`` with ``space/`` on ``sys.path``; the logic they call lives in
:mod:`speedbench.leaderboard`, which the tests exercise directly.
"""
