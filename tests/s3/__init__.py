"""Shared storage tests against a real S3 API server (moto in server mode) on 127.0.0.1."""
