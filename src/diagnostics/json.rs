//! JSON wire form (STUB).
use crate::diagnostics::SelectionReport;
use crate::model::ContextItem;

/// Writes the report in the JSON wire form of spec 06 §10; items are looked up in `items`.
pub fn report_to_json(_report: &SelectionReport, _items: &[ContextItem]) -> String {
    todo!()
}
