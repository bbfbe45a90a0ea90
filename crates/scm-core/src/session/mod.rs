//! Session engine: sets, auto-collapse policy, persistence, resume.
