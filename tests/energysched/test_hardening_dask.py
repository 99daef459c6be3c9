"""The local Dask cluster only obeys this client: TLS with a throw-away certificate (issue 17, item 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from energysched.errors import ConfigError
from energysched.sweep import make_executor, tls_security

pytest.importorskip("distributed")
pytest.importorskip("cryptography")


def _identity(address: str) -> object:
    """Ask the scheduler at ``address`` who it is, as a client without this
    executor's certificate would (one connection, no client machinery): over
    TLS that trusts any server and shows no certificate of its own, or in
    plain TCP."""
    import asyncio
    import ssl

    from distributed.comm import connect

    args: dict[str, ssl.SSLContext] = {}
    if address.startswith("tls://"):
        anyone = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        anyone.check_hostname = False
        anyone.verify_mode = ssl.CERT_NONE
        args["ssl_context"] = anyone

    async def ask() -> object:
        comm = await connect(address, timeout=3, **args)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await asyncio.wait_for(comm.read(), 3)
        finally:
            comm.abort()

    return asyncio.run(ask())


def test_local_cluster_uses_tls_and_refuses_clients_without_the_certificate() -> None:
    from energysched import DaskExecutor

    dask = DaskExecutor(local_workers=1)
    try:
        address = dask.client.scheduler_info()["address"]
        assert address.startswith("tls://127.0.0.1:")
        assert dask.client.submit(sum, [1, 2, 3]).result(timeout=60) == 6
        # another local account: knows the address, not the certificate
        # the scheduler closes the connection (CommClosedError is an OSError)
        with pytest.raises((OSError, TimeoutError)):
            _identity(address)  # TLS, but no certificate the scheduler trusts
        with pytest.raises((OSError, TimeoutError)):
            _identity(address.replace("tls://", "tcp://"))  # no TLS at all
    finally:
        dask.close()


def test_tls_options_are_checked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="--tls-ca-file"):
        tls_security("tls://head:8786", None, None, None)
    with pytest.raises(ConfigError, match="not a tls://"):
        tls_security("tcp://head:8786", str(tmp_path / "ca.pem"), None, None)
    with pytest.raises(ConfigError, match="file not found"):
        tls_security("tls://head:8786", str(tmp_path / "ca.pem"), str(tmp_path / "c.pem"), None)
    with pytest.raises(ConfigError, match="go with --scheduler"):
        make_executor(workers=2, tls={"tls_ca_file": "x", "tls_cert": None, "tls_key": None})


def test_tls_security_from_certificate_files(tmp_path: Path) -> None:
    from distributed.security import Security

    temp = Security.temporary()
    ca = tmp_path / "ca.pem"
    cert = tmp_path / "cert.pem"
    ca.write_text(temp.tls_ca_file)
    cert.write_text(temp.tls_client_cert)  # cert and key in one PEM
    security = tls_security("tls://head:8786", str(ca), str(cert), None)
    assert security.require_encryption
    assert Path(security.tls_ca_file) == ca and Path(security.tls_client_cert) == cert
