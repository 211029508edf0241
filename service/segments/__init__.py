"""Segments: the dimensions an experiment declares and the labels each impression stores
(:mod:`service.segments.dimensions`), and the per-segment ``W`` read back as matrices
(:mod:`service.segments.counts`). The credit script adds each outcome to its labels'
``W`` beside the total; :mod:`service.reports.segments` states the verdict per segment.
"""
