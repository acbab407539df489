"""What every app shares and that depends on no app: errors, service helpers,
database constraint builders, admin flows and the API plumbing."""
