"""Runs the packaged CDK app from a checkout: ``python app.py`` is ``python -m sleeper.cdk.app`` (which see)."""

from sleeper.cdk.app import *  # noqa: F403

if __name__ == "__main__":
    main()  # noqa: F405
