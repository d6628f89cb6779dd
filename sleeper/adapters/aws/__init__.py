"""AWS adapters: the only place boto3 is imported."""
