//! stub
pub(crate) fn run(_args: &crate::cli::DoctorArgs) -> super::Outcome {
    Ok(())
}
