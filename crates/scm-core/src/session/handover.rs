//! The assembled context as a delta against the session's previous output
//! (see [`crate::context::output`]): what a binding hands over.

use serde_json::Value;

use super::transcript::Whole;
use super::Session;
use crate::context::output::OutputDelta;
use crate::error::Result;

impl Session {
    /// [`Session::ingest_and_assemble_json`] as a delta: `have` is the
    /// output (its `seq`) the caller holds; `keep` counts against it.
    pub fn ingest_and_assemble_delta(
        &mut self,
        messages: &[Value],
        have: Option<u32>,
    ) -> Result<OutputDelta> {
        let json = self.assemble_json(messages, Whole::PreviousOutput)?;
        Ok(self.hand_over(json, have))
    }

    /// [`Session::ingest_and_assemble_delta`] for an array in which messages
    /// consumed before may stand in by their fingerprint
    /// ([`crate::context::ingest::STAND_IN_KEY`]). None, and nothing changed,
    /// if a stand-in would count as new (the caller's claim does not hold):
    /// send the messages themselves.
    pub fn ingest_and_assemble_with_stand_ins_delta(
        &mut self,
        messages: &[Value],
        have: Option<u32>,
    ) -> Result<Option<OutputDelta>> {
        let Some(json) = self.assemble_with_stand_ins_json(messages, Whole::PreviousOutput)? else {
            return Ok(None);
        };
        Ok(Some(self.hand_over(json, have)))
    }

    /// [`Session::ingest_and_assemble_tail_json`] as a delta (None: the
    /// window does not continue what was consumed, nothing changed).
    pub fn ingest_and_assemble_tail_delta(
        &mut self,
        total: usize,
        offset: usize,
        tail: &[Value],
        first: Option<&Value>,
        have: Option<u32>,
    ) -> Result<Option<OutputDelta>> {
        let Some(json) =
            self.assemble_tail_json(total, offset, tail, first, Whole::PreviousOutput)?
        else {
            return Ok(None);
        };
        Ok(Some(self.hand_over(json, have)))
    }

    /// The delta of `json` against the previous output; its token counts go
    /// into the call's record.
    fn hand_over(&mut self, json: String, have: Option<u32>) -> OutputDelta {
        let d = self.handover.previous.next(json, have);
        self.record_output(d.tokens, Some(&d));
        d
    }
}
