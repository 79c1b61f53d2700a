"""Runs of approved plan versions, their steps and events, on Django Tasks workers."""
