// The one reader of a topic up to its end (transaction markers included): the platform's.
export { readTopicToEnd } from '../../src/platform/kafka/kafka.js';
