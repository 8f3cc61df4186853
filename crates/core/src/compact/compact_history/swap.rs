//! A summary prepared in the background, swapped in for the start of the history it
//! stands for when that is still the start and the result fits; set aside, with the
//! reason on the receipt, when not.

use super::*;

/// What a receipt says of a background summary that was not used, and why.
pub(super) fn set_aside(why: String) -> String {
    format!("the summary prepared in the background was not used: {why}")
}

/// Stage 4 with the summary `ready` made, whatever the estimate (the user is idle and
/// the summary is ready: the prompt cache is rewritten once, now), when it stands for
/// the start of the history and fits; otherwise why not, and nothing changed.
pub fn swap_now(
    messages: &mut Vec<Message>,
    sizes: &mut Sizes,
    active_request: &str,
    ctx: &Context<'_>,
    ready: &ReadySummary,
) -> Result<StageEvent, String> {
    let trigger = "the turn ended past background_at_percent with a summary ready, and the user is idle".to_string();
    try_swap(messages, sizes, active_request, ctx, ready, trigger)
}

pub(super) fn try_swap(
    messages: &mut Vec<Message>,
    sizes: &mut Sizes,
    active_request: &str,
    ctx: &Context<'_>,
    ready: &ReadySummary,
    trigger: String,
) -> Result<StageEvent, String> {
    match background::standing(&ready.prefix, messages) {
        Standing::Stands {
            end,
            rewritten,
            archived,
        } if background::swap_fits(sizes, end, active_request, &ready.summary, ctx.config) => Ok(swap_in(
            messages,
            sizes,
            active_request,
            ctx,
            ready,
            SwapAt {
                end,
                rewritten,
                archived,
            },
            trigger,
        )),
        Standing::Stands { .. } => {
            Err("the messages after the ones it summarised leave it too little room under the limit".into())
        }
        Standing::Changed(why) => Err(why),
    }
}

/// Where the messages a ready summary covers end now, and what recoverable stages
/// did to them since.
struct SwapAt {
    end: usize,
    rewritten: usize,
    archived: usize,
}

/// `[Compacted]` for the messages `ready` summarised, the ones after them verbatim,
/// and no model call.
fn swap_in(
    messages: &mut Vec<Message>,
    sizes: &mut Sizes,
    active_request: &str,
    ctx: &Context<'_>,
    ready: &ReadySummary,
    at: SwapAt,
    trigger: String,
) -> StageEvent {
    let mut event = summarise_prefix(
        messages,
        sizes,
        Summarise {
            stage: Stage::CompactHistory,
            end: at.end,
            active_request,
            focus: None,
            trigger,
            within: ctx.config.micro_target_chars(),
        },
        ctx,
        &mut background::Prepared(Summary {
            text: ready.summary.clone(),
            server_block: ready.server_block.clone(),
        }),
    );
    if let (Some(note), Some(model)) = (&mut event.summary_note, &ready.model_summary) {
        note.model_summary = Some(model.clone());
    }
    let now = crate::time::unix_now();
    event.swapped = Some(Box::new(Swapped {
        prepared_at_percent: ready.started_at_percent,
        age_secs: now.saturating_sub(ready.started_unix),
        summary_ms: ready.took_ms,
        waited_ms: 0,
        results_rewritten: at.rewritten,
        archived_since: at.archived,
        cache_read: ready.cache_read,
        cache_written: ready.cache_written,
    }));
    event
}
