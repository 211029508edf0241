"""Celery application and tasks that credit impressions to the dueling bandit."""
