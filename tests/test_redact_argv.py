"""Passwords on command lines in the forms a redaction missed: a line continuation between an
option and its value, a password written into a command that reads it on standard input
(`printf`, `cat <<<`, here-strings), a Basic header's `user:X` piped to `base64`, an attached
`sqlcmd -PX`. Each is hidden, remembered, and hidden wherever it shows up again; the near
misses (`printf %s hello`, `ssh -p 2222`) stay readable."""

from __future__ import annotations

import pytest

from auditor.redact import Redactor

PW = "Zq7vLm2pXw9kRt4s"  # 16 random characters: below the entropy detector's threshold


@pytest.fixture
def redactor() -> Redactor:
    return Redactor(b"argv-test-key")


# `{pw}` is the password; `\\\n` a line continuation (backslash, line break).
CONTINUED = [
    "docker login -u ci -p \\\n  {pw} registry.example.com",
    "sshpass -p \\\n{pw} ssh deploy@host",
    "deploy --password \\\n {pw} --yes",
    "deploy --password=\\\n{pw} --yes",
    "deploy --password=\\\r\n    {pw} --yes",
    "curl -u ci:\\\n{pw} https://x.example",
    "mysql -u root \\\n  -p{pw} -e 'select 1'",
    "vault login \\\n  {pw}",
    'bash -c "docker login -u ci -p \\\n  {pw} r.io"',
]
PIPED = [
    "printf %s {pw} | docker login -u ci --password-stdin quay.io",
    "printf '%s' {pw} | podman login -u ci --password-stdin quay.io",
    "printf '%s\\n' \"{pw}\" | helm registry login r.io -u ci --password-stdin",
    "printf '{pw}\\n' | docker login -u ci --password-stdin quay.io",
    "printf {pw} | docker login -u ci --password-stdin quay.io",
    "cat <<< {pw} | docker login -u ci --password-stdin quay.io",
    "cat <<<'{pw}' | gh auth login --with-token",
    "gh auth login --with-token <<< {pw}",
    'docker login -u ci --password-stdin quay.io <<< "{pw}"',
    "sudo -S systemctl restart agent <<< {pw}",
    "printf '%s\\n' {pw} | sudo -u root -S true",
    'curl -H "Authorization: Basic $(echo -n ci:{pw} | base64)" https://x.example',
    "curl -H \"Authorization: Basic $(printf %s 'ci:{pw}' | base64 -w0)\" https://x.example",
    'AUTH=$(echo -n ci:{pw} | base64); curl -H "Authorization: Basic $AUTH" https://x',
    "sqlcmd -S h -U sa -P{pw} -Q 'select 1'",
    "bcp db.dbo.t out t.dat -S h -U sa -P{pw}",
    "ldapsearch -x -D cn=admin,dc=x -w{pw} -b dc=x",
]


@pytest.mark.parametrize("command", CONTINUED + PIPED)
def test_the_password_is_the_only_part_replaced_and_is_remembered(
    redactor: Redactor, command: str
) -> None:
    doc = {"hooks": {"Stop": [{"hooks": [{"command": command.format(pw=PW)}]}]}}
    out = redactor.redact_json(doc)["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert out == command.format(pw=redactor.marker(PW))
    # pasted anywhere later, it is hidden there too
    assert redactor.redact_text(f"note: {PW}") == f"note: {redactor.marker(PW)}"


def test_a_continuation_inside_the_password_hides_all_of_it(redactor: Redactor) -> None:
    command = f"docker login -u ci -p {PW[:8]}\\\n{PW[8:]} r.io"
    out = redactor.redact_text(command)
    assert PW[:8] not in out and PW[8:] not in out
    assert out.startswith("docker login -u ci -p [secret fp:") and out.endswith(" r.io")


@pytest.mark.parametrize(
    "command",
    [
        "printf %s hello",
        "printf '%s\\n' done | tee out.txt",
        "printf %s hello | wc -c",
        "echo hi | base64",
        "echo -n payload | base64 -d",
        "cat <<< hello | tr a-z A-Z",
        "grep -c x <<< hello",
        "ssh -p 2222 host",
        "ssh \\\n  -p 2222 host",
        "mkdir -p \\\n  /tmp/build",
        "docker run -p 8080:80 app \\\n  && docker login r.io",
        "pg_dump -p 5432 -U app db",
        "redis-server --port 6380 \\\n  --save ''",
        "gh auth login --with-token < token.txt",
        "echo $PW | docker login -u ci --password-stdin r.io",
        'cat <<< "$TOKEN" | gh auth login --with-token',
        'gh auth login --with-token <<< "$(cat /run/secrets/gh)"',
        'curl -H "Authorization: Basic $(echo -n "$USER:$PASS" | base64)" https://x',
        "sqlcmd -S h -U sa -Q 'select 1'",
        'sqlcmd -S h -U sa -P "$SQL_PW"',
        "ldapsearch -x -H ldap://h -b dc=x",
        "ls \\\n  -la \\\n  /tmp",
    ],
)
def test_a_near_miss_stays_readable(redactor: Redactor, command: str) -> None:
    assert redactor.redact_text(command) == command
    doc = {"hooks": {"Stop": [{"hooks": [{"command": command}]}]}}
    assert redactor.redact_json(doc) == doc
