"""The loopback Jenkins serves jobs in folders as python-jenkins addresses them (`job/FOLDER/job/NAME`)."""

from __future__ import annotations

import jenkins as python_jenkins

from tests.helpers.fake_jenkins import FakeJenkins


def test_python_jenkins_triggers_and_reads_a_build_of_a_job_in_a_folder(jenkins: FakeJenkins) -> None:
    server = python_jenkins.Jenkins(jenkins.url, username=jenkins.user, password=jenkins.token)
    queue_id = server.build_job("team/ci/L0_MergeRequest", {"PR": "123"})
    server.get_queue_item(queue_id)  # one look starts it (polls_to_start = 1)
    executable = server.get_queue_item(queue_id)["executable"]
    info = server.get_build_info("team/ci/L0_MergeRequest", executable["number"])
    (build,) = jenkins.triggered("team/ci/L0_MergeRequest")
    assert (executable["url"], build.parameters, info["url"]) == (
        f"{jenkins.url}job/team/job/ci/job/L0_MergeRequest/1/", {"PR": "123"}, build.url
    )  # fmt: skip
    assert jenkins.triggered("L0_MergeRequest") == []
