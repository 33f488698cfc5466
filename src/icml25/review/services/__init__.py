"""The services of the review platform, split by concern (see :mod:`icml25.review.service`)."""
