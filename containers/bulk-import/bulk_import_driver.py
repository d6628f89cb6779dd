"""The Spark driver EMR Serverless (or EMR) runs for a bulk import job: arguments are the config bucket, job id,
task id, job run id and platform (see ``sleeper.adapters.aws.launchers``)."""

from lambdas.bulk_import_driver import main

if __name__ == "__main__":
    raise SystemExit(main())
