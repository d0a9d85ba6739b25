import { DEFAULT_MODEL_URI } from './default-model.ts';
import { SERVER_SETTINGS } from './settings/server-settings.ts';
import { MODEL_SETTINGS } from './settings/model-settings.ts';
import { ENGINE_SETTINGS } from './settings/engine-settings.ts';
import { SERVICE_SETTINGS } from './settings/service-settings.ts';
import { APP_SETTINGS } from './settings/app-settings.ts';
import { PROVIDER_SETTINGS } from './settings/provider-settings.ts';
import { PROCESS_SETTINGS } from './settings/process-settings.ts';
import type { SettingSpec, SettingsOf } from './setting-spec.ts';

export type { SettingGroup, SettingSpec, SettingType, SettingsOf } from './setting-spec.ts';
export { DEFAULT_MODEL_URI };

/**
 * Every setting of `hearth serve`, in the order of `--help`, `hearth config print` and the README tables: the
 * settings groups of settings/ (one definition per setting there), joined here.
 */
export const SERVE_SETTINGS = [
  ...SERVER_SETTINGS,
  ...MODEL_SETTINGS,
  ...ENGINE_SETTINGS,
  ...SERVICE_SETTINGS,
  ...APP_SETTINGS,
  ...PROVIDER_SETTINGS,
  ...PROCESS_SETTINGS,
] as const satisfies readonly SettingSpec[];

/** The parsed settings of `hearth serve`, derived from SERVE_SETTINGS. */
export type ServeSettings = SettingsOf<typeof SERVE_SETTINGS>;
