"""The Spark driver EMR Serverless (or EMR) runs for a bulk import job: arguments are the config bucket, job id,
task id, job run id and platform (see ``sleeper.adapters.aws.launchers``). The entry point itself is
``sleeper.runtime.aws.containers.bulk_import``, installed with the package; this file is the script spark-submit
takes."""

from sleeper.runtime.aws.containers.bulk_import import main

if __name__ == "__main__":
    raise SystemExit(main())
