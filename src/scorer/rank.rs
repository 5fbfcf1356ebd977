//! Shared rank pass for Recency and Priority (STUB).
