//! The one place the libraries' environment variables are read: [`from_env`], called once by
//! [`super::dispatch`] (and by the `forward` benchmark's `main`), fills the
//! [`crate::settings::Settings`] of the command's [`crate::backend::Context`].

use crate::settings::Settings;

/// Read every variable [`Settings`] holds from this process's environment.
pub fn from_env() -> Settings {
    Settings::from_vars(|k| std::env::var_os(k))
}

#[cfg(test)]
mod tests {
    /// The names `Settings::from_vars` reads are the ones the libraries' messages quote.
    #[test]
    fn settings_read_the_variables_the_libraries_name() {
        for name in [
            crate::backend::portable::isa::ISA_ENV,
            crate::backend::portable::BF16_ENV,
            crate::backend::mlx::device::REQUIRE_GPU_ENV,
            crate::power::nvml::LIB_ENV,
        ] {
            let s = crate::settings::Settings::from_vars(|k| (k == name).then(|| "x".into()));
            assert_ne!(s, crate::settings::Settings::UNSET, "{name} is not read");
        }
    }
}
