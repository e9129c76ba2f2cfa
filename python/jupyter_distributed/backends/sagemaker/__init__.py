"""``--backend sagemaker``: options (checks), request (pure), package, follow, results, backend,
lifecycle (attach, cancel, release). boto3 is imported only here, inside ``backend``."""
