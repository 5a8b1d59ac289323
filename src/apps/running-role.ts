/** A started process role: its name and how to stop it gracefully. */
export interface RunningRole {
  name: 'api' | 'relay' | 'settlement';
  close: () => Promise<void>;
}
