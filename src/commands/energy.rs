//! stub
pub(crate) fn run(_args: &crate::cli::EnergyArgs) -> super::Outcome {
    Ok(())
}
