//! `emit_ui` against the workflow: the A2UI surface lifecycle.

use serde_json::{Value, json};

use super::{Change, Surface, Workflow};
use crate::a2ui::{self, UiKind};
use crate::error::IntrinsicError;
use crate::limits::{MAX_SURFACES, MAX_UI_MESSAGES};

impl Workflow {
    /// `emit_ui`: each message checked, in order, against the surfaces as
    /// the messages before it leave them.
    pub(super) fn evaluate_ui(
        &self,
        messages: &[Value],
    ) -> Result<(Change, Value), IntrinsicError> {
        let max = MAX_UI_MESSAGES as usize;
        if messages.is_empty() {
            return Err(IntrinsicError::Invalid {
                what: "messages".into(),
                reason: "emit_ui needs at least one message".into(),
            });
        }
        if messages.len() > max {
            return Err(IntrinsicError::over(
                "the number of messages",
                messages.len(),
                max,
                "send them over several calls",
            ));
        }
        // Only the surfaces these messages touch: what applying touches.
        let mut touched: Vec<(String, Option<Surface>)> = Vec::new();
        let mut open = self.surfaces.len();
        for (index, message) in messages.iter().enumerate() {
            let checked = a2ui::check(message)
                .map_err(|reason| IntrinsicError::InvalidUi { index, reason })?;
            let id = checked.surface_id;
            let slot = match touched.iter().position(|(s, _)| *s == id) {
                Some(at) => at,
                None => {
                    touched.push((id.clone(), self.surfaces.get(&id).cloned()));
                    touched.len() - 1
                }
            };
            let surface = &mut touched[slot].1;
            let refuse = |reason: String| IntrinsicError::InvalidUi { index, reason };
            match (checked.kind, surface.as_mut()) {
                (UiKind::Create, Some(_)) => {
                    return Err(refuse(format!(
                        "surface {id:?} exists already; deleteSurface it first or update it"
                    )));
                }
                (UiKind::Create, None) => {
                    if open >= MAX_SURFACES {
                        return Err(refuse(format!(
                            "{MAX_SURFACES} surfaces are open, the most a task may have; \
                             deleteSurface one first"
                        )));
                    }
                    open += 1;
                    *surface = Some(Surface {
                        catalog_id: checked.catalog_id.unwrap_or_default(),
                        messages: 1,
                    });
                }
                (UiKind::Delete, Some(_)) => {
                    open -= 1;
                    *surface = None;
                }
                (_, Some(s)) => s.messages += 1,
                (_, None) => {
                    return Err(refuse(format!(
                        "surface {id:?} does not exist; send createSurface for it first"
                    )));
                }
            }
        }
        let ids: Vec<&str> = touched.iter().map(|(id, _)| id.as_str()).collect();
        let result = json!({"messages": messages.len(), "surfaces": ids, "status": "emitted"});
        Ok((Change::Ui(touched, messages.len() as u64), result))
    }
}
