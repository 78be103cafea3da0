"""Dev tools: agreement with human labels, the align report, the before/after identity check of a refactor."""
